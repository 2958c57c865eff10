// attnscope-bench-draw: time to draw a 4,096 x 4,096 token grid after a zoom or pan (offscreen; not a test).
// Prints "draw_after_zoom_ms: X" (the median over a sequence of zooms and pans) for bench/run_benchmarks.sh.
#include "attention_grid_view.h"
#include "util/memory_info.h"

#include <QApplication>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <qcustomplot.h>
#include <random>

using namespace attnscope;
using Clock = std::chrono::steady_clock;

namespace {
double ms(Clock::time_point a, Clock::time_point b)
{
    return std::chrono::duration<double, std::milli>(b - a).count();
}

// A causal grid shaped like real attention: a diagonal, a first-token sink, and sparse spikes, rows summing to 1.
widgets::GridDataPtr attentionLikeGrid(int n)
{
    auto g = std::make_shared<widgets::GridData>();
    g->rows = g->cols = n;
    g->values.assign(static_cast<std::size_t>(n) * n, std::nanf(""));
    g->highlight.assign(g->values.size(), 0);
    std::mt19937 rng(1);
    std::exponential_distribution<float> e(1.0f);
    for (int r = 0; r < n; ++r) {
        float* row = g->values.data() + static_cast<std::size_t>(r) * n;
        float sum = 0;
        for (int c = 0; c <= r; ++c) {
            row[c] = std::pow(e(rng), 4.0f) * 0.01f + (c == 0 ? 2.0f : 0) + (c == r ? 1.0f : 0);
            sum += row[c];
        }
        for (int c = 0; c <= r; ++c)
            row[c] /= sum;
    }
    for (int i = 0; i < n; ++i) {
        g->rowLabels << QStringLiteral("tok%1").arg(i);
        g->colLabels << QStringLiteral("tok%1").arg(i);
        g->rowPositions.push_back(i);
        g->colPositions.push_back(i);
    }
    g->title = QStringLiteral("bench");
    g->valueLabel = QStringLiteral("attention probability");
    return g;
}
} // namespace

int main(int argc, char** argv)
{
    core::returnLargeBlocksToSystem();
    qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    const int n = argc > 1 ? std::atoi(argv[1]) : 4096;
    widgets::AttentionGridView view;
    view.resize(1000, 800);
    view.show();
    const auto data = attentionLikeGrid(n);
    const auto t0 = Clock::now();
    view.setData(data);
    view.plot()->replot();
    const auto t1 = Clock::now();
    std::printf("grid %dx%d in a 1000x800 view: first draw (data handed over, levels and tiles built) %.1f ms\n", n, n,
                ms(t0, t1));
    // Zooms and pans: from the whole grid in to about 40 cells across, at random places, and back out.
    std::mt19937 rng(2);
    std::uniform_real_distribution<double> where(0.0, 1.0);
    std::vector<double> times;
    double width = n;
    for (int step = 0; step < 60; ++step) {
        width = step < 30 ? std::max(40.0, width / 1.25) : std::min(double(n), width * 1.25);
        const double cx = where(rng) * n, cy = where(rng) * n;
        const auto a = Clock::now();
        view.plot()->xAxis->setRange(cx - width / 2, cx + width / 2);
        view.plot()->yAxis->setRange(cy - width / 2, cy + width / 2);
        view.plot()->replot();
        times.push_back(ms(a, Clock::now()));
    }
    std::sort(times.begin(), times.end());
    std::printf("draw after a zoom or pan: median %.1f ms, slowest %.1f ms over %zu zooms (target 50)\n",
                times[times.size() / 2], times.back(), times.size());
    std::printf("draw_after_zoom_ms: %.1f\n", times[times.size() / 2]);
    std::fflush(stdout);
    return 0;
}
