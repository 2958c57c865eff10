// The interactive multi-head text page: the segment's tokens as flowing words; hovering or clicking a word tints
// the words it attends to (selected head or average); a table lists the strongest (from, to, strength %) pairs, or
// (from, to, score) when the grid holds raw scores.
#pragma once

#include "grid_data.h"

#include <QWidget>

#include <vector>

class QTableWidget;

namespace attnscope::widgets {

class WordFlow;

class TextAttentionView : public QWidget {
    Q_OBJECT
public:
    explicit TextAttentionView(QWidget* parent = nullptr);
    void setData(GridDataPtr grid);
    // Each token's surprisal in bits, by absolute position (NaN: none); words are tinted by it while no word's
    // attention is shown. Empty: no tint.
    void setSurprisal(std::vector<double> bitsByPosition);
    // Outlines the words of these token positions (tokens picked in another view); empty: none.
    void setMarkedPositions(std::vector<int> positions);
    const std::vector<int>& markedPositions() const;
    // Column (key index) whose attention row is shown; -1 = none. Only query tokens have a row.
    void setFocusColumn(int col);
    int focusColumn() const;
    // Strongest pairs as shown in the table: (from row, to col, value), best first.
    struct Pair {
        int row, col;
        float value;
    };
    static std::vector<Pair> strongestPairs(const GridData& g, int count, bool skipSelf);
    QTableWidget* pairsTable() const { return m_table; }

signals:
    void tokenHovered(int position); // absolute token position, -1 when none
    void pairActivated(int row, int col); // a pair clicked in the table (grid row and column)

private:
    WordFlow* m_flow;
    QTableWidget* m_table;
    GridDataPtr m_data;
};

} // namespace attnscope::widgets
