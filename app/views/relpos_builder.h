// Converts scan results into the relative-position heatmap's drawing data (Figs. 5 and 7).
#pragma once

#include "analysis/relpos_scan.h"
#include "relpos_figure_data.h"

#include <QString>

namespace attnscope::app {

enum class HeadOrder { ByLayer, ByEntropy, ByMeanDistance };

// One panel per requested profile ("full", "term_a", ...); rows ordered as asked (ranking from the full profile).
widgets::RelposFigurePtr relposFigure(const core::ScanResult& scan, const QString& title,
                                      const std::vector<std::string>& profiles, HeadOrder order = HeadOrder::ByLayer,
                                      bool log = false);
// "full attention", "term (a)", "terms (a+b)" for a profile key of a scan result.
QString profileTitle(const std::string& profileKey);

} // namespace attnscope::app
