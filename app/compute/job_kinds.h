// The table of job kinds: every request the window sends to a compute thread is a row here, as a model family is a
// row of the family table. A row says where the kind runs, how long its results stay true and how it is named, so
// the controller handles cancel, "out of date", busy and failures for every kind alike: none can be forgotten.
#pragma once

#include "util/error.h"

#include <QCoreApplication>
#include <QMetaType>
#include <QString>
#include <array>
#include <cstddef>

namespace attnscope::app {

enum class JobKind {
    Load,
    Text,
    Grid,
    Thumbnails,
    TextProfile,
    Scan,
    Comparison,
    Atlas,
    Rollout,
    Ablation,
    MaskedFills,
    NextToken,
    Lens,
    Surprisal,
    QkSpace,
    Attribution,
    Routing,
    Explanation,
    ImageRollout,
    Patching,
    PromptPair,
    HeadContexts,
    Sentences,
    WordTimings,
};

// Which thread runs a kind: the interactive lane (the text and what is on screen at once) or the background lane
// (analyses that take seconds and must not hold up the grid).
enum class Lane { Interactive, Background };

// Until when a kind's result is true: until the model changes, or already when the text is emptied (a job of the old
// text is then stopped and never delivered). Independent kinds (a comparison opens its own models, patching reads its
// own prompts) outlive both.
enum class Lifetime { Independent, Model, Text };

struct JobKindRow {
    JobKind kind;
    const char* name; // what the user reads in a failure or progress ("Head atlas: out of memory"), untranslated
    Lane lane;
    Lifetime lifetime;
    bool showsBusy; // the status bar says "busy" while it runs (a quick grid or overview does not)
    // Cancel keeps what was measured: the job runs even when cancelled before it started, and delivers its partial
    // result (a scan's tokens so far, patching's cells so far) instead of a failure.
    bool keepsPartial = false;
};

inline constexpr std::array kJobKinds{
    JobKindRow{JobKind::Load, QT_TRANSLATE_NOOP("JobKind", "Opening the model"), Lane::Interactive, Lifetime::Independent, true},
    JobKindRow{JobKind::Text, QT_TRANSLATE_NOOP("JobKind", "Attention of the text"), Lane::Interactive, Lifetime::Model, true},
    JobKindRow{JobKind::Grid, QT_TRANSLATE_NOOP("JobKind", "Grid"), Lane::Interactive, Lifetime::Text, false},
    JobKindRow{JobKind::Thumbnails, QT_TRANSLATE_NOOP("JobKind", "Head overview"), Lane::Interactive, Lifetime::Text, false},
    JobKindRow{JobKind::TextProfile, QT_TRANSLATE_NOOP("JobKind", "Relative position profile"), Lane::Background, Lifetime::Text, false},
    JobKindRow{JobKind::Scan, QT_TRANSLATE_NOOP("JobKind", "Corpus scan"), Lane::Background, Lifetime::Model, true, true},
    JobKindRow{JobKind::Comparison, QT_TRANSLATE_NOOP("JobKind", "Model comparison"), Lane::Background, Lifetime::Independent, true},
    JobKindRow{JobKind::Atlas, QT_TRANSLATE_NOOP("JobKind", "Head atlas"), Lane::Background, Lifetime::Text, true},
    JobKindRow{JobKind::Rollout, QT_TRANSLATE_NOOP("JobKind", "Attention rollout"), Lane::Background, Lifetime::Text, true},
    JobKindRow{JobKind::Ablation, QT_TRANSLATE_NOOP("JobKind", "Head ablation"), Lane::Background, Lifetime::Text, true},
    JobKindRow{JobKind::MaskedFills, QT_TRANSLATE_NOOP("JobKind", "Masked-token predictions"), Lane::Interactive, Lifetime::Text, false},
    JobKindRow{JobKind::NextToken, QT_TRANSLATE_NOOP("JobKind", "Next-token predictions"), Lane::Interactive, Lifetime::Text, false},
    JobKindRow{JobKind::Lens, QT_TRANSLATE_NOOP("JobKind", "Logit lens"), Lane::Background, Lifetime::Text, true},
    JobKindRow{JobKind::Surprisal, QT_TRANSLATE_NOOP("JobKind", "Surprisal"), Lane::Background, Lifetime::Text, true},
    JobKindRow{JobKind::QkSpace, QT_TRANSLATE_NOOP("JobKind", "Query-key space"), Lane::Background, Lifetime::Text, true},
    JobKindRow{JobKind::Attribution, QT_TRANSLATE_NOOP("JobKind", "Direct logit attribution"), Lane::Background, Lifetime::Text, true},
    JobKindRow{JobKind::Routing, QT_TRANSLATE_NOOP("JobKind", "Experts"), Lane::Background, Lifetime::Text, true},
    JobKindRow{JobKind::Explanation, QT_TRANSLATE_NOOP("JobKind", "How this head computes"), Lane::Interactive, Lifetime::Text, false},
    JobKindRow{JobKind::ImageRollout, QT_TRANSLATE_NOOP("JobKind", "Rollout over the picture"), Lane::Background, Lifetime::Text, true},
    JobKindRow{JobKind::Patching, QT_TRANSLATE_NOOP("JobKind", "Activation patching"), Lane::Background, Lifetime::Model, true, true},
    JobKindRow{JobKind::PromptPair, QT_TRANSLATE_NOOP("JobKind", "Both prompts"), Lane::Background, Lifetime::Model, true},
    JobKindRow{JobKind::HeadContexts, QT_TRANSLATE_NOOP("JobKind", "Head contexts"), Lane::Background, Lifetime::Model, true},
    JobKindRow{JobKind::Sentences, QT_TRANSLATE_NOOP("JobKind", "Sentences"), Lane::Background, Lifetime::Text, true},
    JobKindRow{JobKind::WordTimings, QT_TRANSLATE_NOOP("JobKind", "Word timings"), Lane::Background, Lifetime::Text, true},
};

inline constexpr std::size_t kJobKindCount = kJobKinds.size();

constexpr std::size_t jobIndex(JobKind kind) { return static_cast<std::size_t>(kind); }

// The table is in the enum's order (checked here, so a row cannot go missing or move).
constexpr bool tableInEnumOrder()
{
    for (std::size_t i = 0; i < kJobKindCount; ++i)
        if (jobIndex(kJobKinds[i].kind) != i)
            return false;
    return true;
}
static_assert(tableInEnumOrder(), "kJobKinds lists every JobKind once, in the enum's order");
static_assert(jobIndex(JobKind::WordTimings) + 1 == kJobKindCount, "a JobKind without a row in kJobKinds");

constexpr const JobKindRow& jobRow(JobKind kind) { return kJobKinds[jobIndex(kind)]; }

inline QString jobName(JobKind kind) { return QCoreApplication::translate("JobKind", jobRow(kind).name); }

// Why a job produced no result, in the one shape every front end reads: the kind, a title ("what"), the core's
// error code and its message. `cancelled` is the code Cancelled: a stop the user asked for, not a failure.
struct JobFailure {
    JobKind kind = JobKind::Text;
    QString what;    // the kind's name, or what exactly was asked (the model spec of a load)
    QString message; // one readable line naming the file and the problem where there is one
    core::ErrorCode code = core::ErrorCode::BadInput;
    bool cancelled() const { return code == core::ErrorCode::Cancelled; }
};

} // namespace attnscope::app

Q_DECLARE_METATYPE(attnscope::app::JobFailure)
