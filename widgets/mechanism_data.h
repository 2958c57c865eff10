// What the mechanism view ("How this head computes") draws for one step: labelled vectors as colour strips and
// labelled numbers as bars, with the step's title and a sentence for the class. Plain data, built in app/views.
#pragma once

#include <QString>

#include <memory>
#include <vector>

namespace attnscope::widgets {

struct MechanismStrip {
    QString label;
    std::vector<float> values;
    bool emphasised = false; // drawn with a frame: the result of the step
};

struct MechanismBar {
    QString label;
    double value = 0;
    bool masked = false;     // a key the query may not see: no bar, the word "masked"
    bool emphasised = false; // the largest, or the query's own token
};

struct MechanismStep {
    QString title;       // "3 · Scores: q · k, scaled"
    QString explanation; // one or two sentences
    QString stripsCaption, barsCaption;
    std::vector<MechanismStrip> strips;
    std::vector<MechanismBar> bars;
    bool probabilities = false; // bars are 0..1 (else signed numbers scaled to the largest)
};

struct MechanismData {
    QString title; // model · layer · head · query
    std::vector<MechanismStep> steps;
};
using MechanismDataPtr = std::shared_ptr<const MechanismData>;

} // namespace attnscope::widgets
