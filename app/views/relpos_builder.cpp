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
    const QString terms = QString::fromStdString(p->terms.label());
    return terms.contains('+') ? QObject::tr("terms (%1)").arg(terms) : QObject::tr("term (%1)").arg(terms);
}

widgets::RelposFigurePtr relposFigure(const core::ScanResult& scan, const QString& title,
                                      const std::vector<std::string>& profiles, HeadOrder order, bool log)
{
    auto f = std::make_shared<widgets::RelposFigureData>();
    f->title = title;
    f->log = log;
    for (const auto& p : profiles) {
        widgets::RelposFigurePanel panel;
        panel.title = profileTitle(p);
        panel.layers = scan.layers;
        panel.heads = scan.heads;
        panel.distances = scan.distances;
        panel.values = scan.average(p);
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
