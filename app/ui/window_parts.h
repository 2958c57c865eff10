// The parts of the main window that its controllers share: the compute controller, the views and panels the window
// placed, its layout and status bar. The window makes them once and hands every controller the same WindowParts;
// each controller owns one concern (what is selected and shown, the text or translation, the analyses, the files).
#pragma once

#include <string>
#include <vector>

class QMainWindow;

namespace attnscope::widgets {
class AttentionGridView;
class TextAttentionView;
} // namespace attnscope::widgets

namespace attnscope::app {

class AtlasPanel;
class ComparisonPanel;
class ComputeController;
class DisplayPanel;
class ExpertsPanel;
class HeadsPanel;
class ImagePanel;
class ModelPanel;
class PredictionPanel;
class QkPanel;
class RelposPanel;
class StatusArea;
class TextPanel;
class TranslationPanel;
class WindowLayout;

struct WindowParts {
    QMainWindow* window = nullptr;
    ComputeController* compute = nullptr;
    std::vector<std::string> builtinDirs;
    WindowLayout* layout = nullptr;
    StatusArea* status = nullptr;
    widgets::AttentionGridView* grid = nullptr;
    widgets::TextAttentionView* textView = nullptr;
    TextPanel* text = nullptr;
    TranslationPanel* translation = nullptr;
    HeadsPanel* heads = nullptr;
    DisplayPanel* display = nullptr;
    ModelPanel* model = nullptr;
    RelposPanel* relpos = nullptr;
    ComparisonPanel* comparison = nullptr;
    AtlasPanel* atlas = nullptr;
    PredictionPanel* predictions = nullptr;
    QkPanel* qk = nullptr;
    ExpertsPanel* experts = nullptr;
    ImagePanel* image = nullptr;
};

} // namespace attnscope::app
