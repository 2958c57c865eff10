// Grid data writers. NPY: version 1.0 header, '<f4', C order, shape (rows, cols).
#include "export/data_export.h"

#include "io/npy.h"
#include "util/atomic_file.h"
#include "util/error.h"

#include <QBuffer>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTextStream>
#include <cmath>

namespace attnscope::app {

namespace {
QString csvField(const QString& s)
{
    QString t = s;
    if (t.contains(',') || t.contains('"') || t.contains('\n')) {
        t.replace('"', QStringLiteral("\"\""));
        t = '"' + t + '"';
    }
    return t;
}
} // namespace

QString exportGridData(const widgets::GridData& g, const QString& path)
{
    const QString ext = QFileInfo(path).suffix().toLower();
    if (ext != QLatin1String("csv") && ext != QLatin1String("npy") && ext != QLatin1String("json"))
        return QObject::tr("%1: unknown data format \"%2\" (use .csv, .npy or .json)").arg(path, ext);
    // Built in memory, then written whole (saveFileAtomically): a failed write leaves any earlier file intact.
    QByteArray bytes;
    QBuffer f(&bytes);
    f.open(QIODevice::WriteOnly);

    if (ext == QLatin1String("csv")) {
        QTextStream out(&f);
        out << csvField(QObject::tr("query \\ key"));
        for (int c = 0; c < g.cols; ++c)
            out << ',' << csvField(g.colLabels.value(c));
        out << '\n';
        for (int r = 0; r < g.rows; ++r) {
            out << csvField(g.rowLabels.value(r));
            for (int c = 0; c < g.cols; ++c) {
                const float v = g.at(r, c);
                out << ',' << (std::isnan(v) ? QString() : QString::number(static_cast<double>(v), 'g', 9));
            }
            out << '\n';
        }
    } else if (ext == QLatin1String("npy")) {
        const std::string npy = core::npyBytes({g.rows, g.cols}, g.values.data());
        f.write(npy.data(), static_cast<qint64>(npy.size()));
    } else {
        QJsonObject o;
        o[QStringLiteral("title")] = g.title;
        o[QStringLiteral("value")] = g.valueLabel;
        o[QStringLiteral("memory_columns")] = g.memoryCols;
        o[QStringLiteral("query_tokens")] = QJsonArray::fromStringList(g.rowLabels);
        o[QStringLiteral("key_tokens")] = QJsonArray::fromStringList(g.colLabels);
        QJsonArray rowPos, colPos, rows;
        for (int p : g.rowPositions)
            rowPos.append(p);
        for (int p : g.colPositions)
            colPos.append(p);
        for (int r = 0; r < g.rows; ++r) {
            QJsonArray row;
            for (int c = 0; c < g.cols; ++c) {
                const float v = g.at(r, c);
                row.append(std::isnan(v) ? QJsonValue() : QJsonValue(static_cast<double>(v)));
            }
            rows.append(row);
        }
        o[QStringLiteral("query_positions")] = rowPos;
        o[QStringLiteral("key_positions")] = colPos;
        o[QStringLiteral("values")] = rows; // null = masked
        f.write(QJsonDocument(o).toJson(QJsonDocument::Indented));
    }
    f.close();
    return saveFileAtomically(path, bytes);
}

QString saveFileAtomically(const QString& path, const QByteArray& bytes)
{
    // The core's writer: every write checked (QSaveFile's buffering hid ENOSPC on Qt 6.4 and reported success for an
    // empty file), flushed to disk, then renamed over the target, keeping its permissions and following a link.
    try {
        core::AtomicFile f(QFile::encodeName(path).toStdString());
        f.write(bytes.constData(), static_cast<std::size_t>(bytes.size()));
        f.commit();
    } catch (const core::Error& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

} // namespace attnscope::app
