// relposFigure implementation.
#include "views/relpos_builder.h"

#include <QObject>
#include <algorithm>
#include <numeric>

namespace attnscope::app {

QString profileTitle(const std::string& profileKey)
{
    const auto p = core::Profile::fromKey(profileKey);
    if (!p)
        return QString::fromStdString(profileKey);
    if (p->kind == core::ProfileKind::Full)
        return QObject::tr("full attention");
    if (p->kind == core::ProfileKind::Bands) {
        const QString bands = QString::fromStdString(profileKey.substr(5)); // after "band_"
        return bands.contains('+') ? QObject::tr("frequency bands %1").arg(bands) : QObject::tr("frequency band %1").arg(bands);
    }
    const QString terms = QString::fromStdString(p->terms.label());
    return terms.contains('+') ? QObject::tr("terms (%1)").arg(terms) : QObject::tr("term (%1)").arg(terms);
}

widgets::RelposFigurePtr relposFigure(const core::ScanResult& scan, const QString& title,
                                      const std::vector<std::string>& profiles, HeadOrder order, bool log)
{
    auto f = std::make_shared<widgets::RelposFigureData>();
    f->title = title;
    f->log = log;
    // Distances no query reached (a text shorter than the chunk) are left off the axis.
    int shown = 1;
    for (int d = 0; d < scan.distances; ++d)
        if (scan.count[static_cast<std::size_t>(d)] > 0)
            shown = d + 1;
    for (const auto& p : profiles) {
        widgets::RelposFigurePanel panel;
        panel.title = profileTitle(p);
        panel.layers = scan.layers;
        panel.heads = scan.heads;
        panel.distances = shown;
        const auto all = scan.average(p);
        for (int row = 0; row < scan.layers * scan.heads; ++row)
            panel.values.insert(panel.values.end(), all.begin() + static_cast<std::ptrdiff_t>(row) * scan.distances,
                                all.begin() + static_cast<std::ptrdiff_t>(row) * scan.distances + shown);
        f->panels.push_back(std::move(panel));
    }
    if (order != HeadOrder::ByLayer) {
        const auto s = core::summariseHeads(scan, "full");
        std::vector<int> idx(s.size());
        std::iota(idx.begin(), idx.end(), 0);
        std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) {
            return order == HeadOrder::ByEntropy ? s[static_cast<std::size_t>(a)].entropy > s[static_cast<std::size_t>(b)].entropy
                                                 : s[static_cast<std::size_t>(a)].meanDistance > s[static_cast<std::size_t>(b)].meanDistance;
        });
        f->rowOrder = idx;
    }
    return f;
}

} // namespace attnscope::app
