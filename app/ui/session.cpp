// Session files: the key table and its readers/writers.
#include "ui/session.h"

#include "export/data_export.h"

#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <algorithm>
#include <cmath>
#include <functional>

namespace attnscope::app {

namespace {
constexpr const char* kFormat = "attnscope-session/1";

// One key of the file: where it lives ("selection.layer"), how to write it, and how to read it back (returning an
// error text for a value of the wrong type or range).
struct SessionKey {
    const char* path;
    std::function<QJsonValue(const SessionState&)> write;
    std::function<QString(SessionState&, const QJsonValue&)> read;
    bool required = false;
};

QString expectInt(const QJsonValue& v, int lo, int hi, int& out)
{
    const double d = v.toDouble(std::nan(""));
    if (!v.isDouble() || d != std::floor(d) || d < lo || d > hi)
        return QObject::tr("must be a whole number from %1 to %2").arg(lo).arg(hi);
    out = static_cast<int>(d);
    return {};
}
QString expectBool(const QJsonValue& v, bool& out)
{
    if (!v.isBool())
        return QObject::tr("must be true or false");
    out = v.toBool();
    return {};
}
QString expectString(const QJsonValue& v, QString& out)
{
    if (!v.isString())
        return QObject::tr("must be a string");
    out = v.toString();
    return {};
}

const std::vector<SessionKey>& keys()
{
    static const std::vector<SessionKey> table = {
        {"model", [](const SessionState& s) { return QJsonValue(s.model); },
         [](SessionState& s, const QJsonValue& v) { return expectString(v, s.model); }, true},
        {"text", [](const SessionState& s) { return QJsonValue(s.text); },
         [](SessionState& s, const QJsonValue& v) { return expectString(v, s.text); }, true},
        {"translation.source", [](const SessionState& s) { return QJsonValue(s.source); },
         [](SessionState& s, const QJsonValue& v) { return expectString(v, s.source); }},
        {"translation.target", [](const SessionState& s) { return QJsonValue(s.target); },
         [](SessionState& s, const QJsonValue& v) { return expectString(v, s.target); }},
        {"patching.clean", [](const SessionState& s) { return QJsonValue(s.patching.clean); },
         [](SessionState& s, const QJsonValue& v) { return expectString(v, s.patching.clean); }},
        {"patching.corrupt", [](const SessionState& s) { return QJsonValue(s.patching.corrupt); },
         [](SessionState& s, const QJsonValue& v) { return expectString(v, s.patching.corrupt); }},
        {"patching.answer", [](const SessionState& s) { return QJsonValue(s.patching.answer); },
         [](SessionState& s, const QJsonValue& v) { return expectString(v, s.patching.answer); }},
        {"patching.wrong", [](const SessionState& s) { return QJsonValue(s.patching.wrong); },
         [](SessionState& s, const QJsonValue& v) { return expectString(v, s.patching.wrong); }},
        {"patching.component",
         [](const SessionState& s) { return QJsonValue(QString::fromLatin1(core::patchComponentName(s.patching.component))); },
         [](SessionState& s, const QJsonValue& v) {
             QString name;
             if (QString err = expectString(v, name); !err.isEmpty())
                 return err;
             try {
                 s.patching.component = core::patchComponentNamed(name.toStdString());
             } catch (const std::exception&) {
                 return QObject::tr("must be head-out, q, k, v, pattern or resid");
             }
             return QString();
         }},
        {"patching.perPosition", [](const SessionState& s) { return QJsonValue(s.patching.perPosition); },
         [](SessionState& s, const QJsonValue& v) { return expectBool(v, s.patching.perPosition); }},
        {"patching.noising", [](const SessionState& s) { return QJsonValue(s.patching.noising); },
         [](SessionState& s, const QJsonValue& v) { return expectBool(v, s.patching.noising); }},
        {"patching.coarseToFine", [](const SessionState& s) { return QJsonValue(s.patching.coarseToFine); },
         [](SessionState& s, const QJsonValue& v) -> QString {
             const double t = v.toDouble(-1);
             if (!v.isDouble() || !(t >= 0 && t <= 1))
                 return QObject::tr("must be a threshold from 0 (off) to 1");
             s.patching.coarseToFine = t;
             return {};
         }},
        {"patching.mode",
         [](const SessionState& s) { return QJsonValue(s.patching.mode == PatchingRequest::Mode::Path ? "path" : "components"); },
         [](SessionState& s, const QJsonValue& v) -> QString {
             if (v != QJsonValue("path") && v != QJsonValue("components"))
                 return QObject::tr("must be \"components\" or \"path\"");
             s.patching.mode = v == QJsonValue("path") ? PatchingRequest::Mode::Path : PatchingRequest::Mode::Components;
             return {};
         }},
        {"patching.senders", [](const SessionState& s) { return QJsonValue(s.patching.senders); },
         [](SessionState& s, const QJsonValue& v) { return expectString(v, s.patching.senders); }},
        {"patching.receivers", [](const SessionState& s) { return QJsonValue(s.patching.receivers); },
         [](SessionState& s, const QJsonValue& v) { return expectString(v, s.patching.receivers); }},
        {"patching.input",
         [](const SessionState& s) { return QJsonValue(QString::fromLatin1(core::patchComponentName(s.patching.receiverInput))); },
         [](SessionState& s, const QJsonValue& v) -> QString {
             if (v != QJsonValue("q") && v != QJsonValue("k") && v != QJsonValue("v"))
                 return QObject::tr("must be q, k or v");
             s.patching.receiverInput = core::patchComponentNamed(v.toString().toStdString());
             return {};
         }},
        {"patching.receiverHeadOnly", [](const SessionState& s) { return QJsonValue(s.patching.receiverHeadOnly); },
         [](SessionState& s, const QJsonValue& v) { return expectBool(v, s.patching.receiverHeadOnly); }},
        {"patching.freezeMlps", [](const SessionState& s) { return QJsonValue(s.patching.freezeMlps); },
         [](SessionState& s, const QJsonValue& v) { return expectBool(v, s.patching.freezeMlps); }},
        // The site (a single-stream model's layer): the key keeps the name the first sessions wrote.
        {"selection.layer", [](const SessionState& s) { return QJsonValue(s.selection.site); },
         [](SessionState& s, const QJsonValue& v) { return expectInt(v, 0, 100000, s.selection.site); }},
        {"selection.siteAverage", [](const SessionState& s) { return QJsonValue(s.selection.siteAverage); },
         [](SessionState& s, const QJsonValue& v) { return expectBool(v, s.selection.siteAverage); }},
        {"selection.heads",
         [](const SessionState& s) {
             QJsonArray a;
             for (int h : s.selection.heads)
                 a.append(h);
             return QJsonValue(a);
         },
         [](SessionState& s, const QJsonValue& v) -> QString {
             if (!v.isArray() || v.toArray().size() > 100000)
                 return QObject::tr("must be a list of head numbers");
             s.selection.heads.clear();
             for (const auto& h : v.toArray()) {
                 int x = 0;
                 if (const QString e = expectInt(h, 0, 100000, x); !e.isEmpty())
                     return e;
                 s.selection.heads.push_back(x);
             }
             return {};
         }},
        {"selection.segment", [](const SessionState& s) { return QJsonValue(s.selection.segment); },
         [](SessionState& s, const QJsonValue& v) { return expectInt(v, -1, 100000000, s.selection.segment); }},
        {"selection.topFraction", [](const SessionState& s) { return QJsonValue(s.selection.topFraction); },
         [](SessionState& s, const QJsonValue& v) -> QString {
             const double f = v.toDouble(-1);
             if (!v.isDouble() || !(f > 0 && f <= 1))
                 return QObject::tr("must be a fraction above 0 and at most 1");
             s.selection.topFraction = f;
             return {};
         }},
        {"selection.highlightMemoryOnly",
         [](const SessionState& s) { return QJsonValue(s.selection.highlightScope == HighlightScope::Memory); },
         [](SessionState& s, const QJsonValue& v) {
             bool memory = true;
             const QString e = expectBool(v, memory);
             s.selection.highlightScope = memory ? HighlightScope::Memory : HighlightScope::AllKeys;
             return e;
         }},
        {"selection.revealRows", [](const SessionState& s) { return QJsonValue(s.selection.revealRows); },
         [](SessionState& s, const QJsonValue& v) { return expectInt(v, -1, 100000000, s.selection.revealRows); }},
        {"selection.terms.a", [](const SessionState& s) { return QJsonValue(s.selection.terms.a); },
         [](SessionState& s, const QJsonValue& v) { return expectBool(v, s.selection.terms.a); }},
        {"selection.terms.b", [](const SessionState& s) { return QJsonValue(s.selection.terms.b); },
         [](SessionState& s, const QJsonValue& v) { return expectBool(v, s.selection.terms.b); }},
        {"selection.terms.c", [](const SessionState& s) { return QJsonValue(s.selection.terms.c); },
         [](SessionState& s, const QJsonValue& v) { return expectBool(v, s.selection.terms.c); }},
        {"selection.terms.d", [](const SessionState& s) { return QJsonValue(s.selection.terms.d); },
         [](SessionState& s, const QJsonValue& v) { return expectBool(v, s.selection.terms.d); }},
        {"selection.terms.raw", [](const SessionState& s) { return QJsonValue(s.selection.terms.raw); },
         [](SessionState& s, const QJsonValue& v) { return expectBool(v, s.selection.terms.raw); }},
        {"selection.terms.uncapped", [](const SessionState& s) { return QJsonValue(s.selection.terms.uncapped); },
         [](SessionState& s, const QJsonValue& v) { return expectBool(v, s.selection.terms.uncapped); }},
        {"selection.terms.heuristic", [](const SessionState& s) { return QJsonValue(s.selection.terms.heuristic); },
         [](SessionState& s, const QJsonValue& v) { return expectBool(v, s.selection.terms.heuristic); }},
        {"view.colourMap", [](const SessionState& s) { return QJsonValue(widgets::colourMapName(s.display.colourMap)); },
         [](SessionState& s, const QJsonValue& v) -> QString {
             QString name;
             if (const QString e = expectString(v, name); !e.isEmpty())
                 return e;
             if (!widgets::colourMapNames().contains(name))
                 return QObject::tr("must be one of %1").arg(widgets::colourMapNames().join(QStringLiteral(", ")));
             s.display.colourMap = widgets::colourMapFromName(name);
             return {};
         }},
        {"view.normalisation", [](const SessionState& s) { return QJsonValue(static_cast<int>(s.display.normalisation)); },
         [](SessionState& s, const QJsonValue& v) {
             int n = 0;
             const QString e = expectInt(v, 0, 2, n);
             s.display.normalisation = static_cast<widgets::Normalisation>(n);
             return e;
         }},
        {"view.values", [](const SessionState& s) { return QJsonValue(s.display.values); },
         [](SessionState& s, const QJsonValue& v) { return expectBool(v, s.display.values); }},
        {"view.highlight", [](const SessionState& s) { return QJsonValue(s.display.highlight); },
         [](SessionState& s, const QJsonValue& v) { return expectBool(v, s.display.highlight); }},
        {"view.bandSplit", [](const SessionState& s) { return s.bandSplit.isEmpty() ? QJsonValue() : QJsonValue(s.bandSplit); },
         [](SessionState& s, const QJsonValue& v) { return expectString(v, s.bandSplit); }},
        {"relpos.order", [](const SessionState& s) { return QJsonValue(s.relposOrder); },
         [](SessionState& s, const QJsonValue& v) { return expectInt(v, 0, 2, s.relposOrder); }},
        {"relpos.log", [](const SessionState& s) { return QJsonValue(s.relposLog); },
         [](SessionState& s, const QJsonValue& v) { return expectBool(v, s.relposLog); }},
        {"scan", [](const SessionState& s) { return s.scanFile.isEmpty() ? QJsonValue() : QJsonValue(s.scanFile); },
         [](SessionState& s, const QJsonValue& v) -> QString {
             if (const QString e = expectString(v, s.scanFile); !e.isEmpty())
                 return e;
             if (s.scanFile.contains('/') || s.scanFile.contains('\\') || s.scanFile.startsWith('.'))
                 return QObject::tr("must be a file name next to the session");
             return {};
         }},
    };
    return table;
}

// Nested access by dotted path.
QJsonValue valueAt(const QJsonObject& root, const QString& path)
{
    const QStringList parts = path.split('.');
    QJsonValue v = root;
    for (const QString& p : parts) {
        if (!v.isObject())
            return QJsonValue(QJsonValue::Undefined);
        v = v.toObject().value(p);
    }
    return v;
}
void setValueAt(QJsonObject& root, const QStringList& parts, const QJsonValue& value)
{
    if (parts.size() == 1) {
        root[parts.front()] = value;
        return;
    }
    QJsonObject child = root.value(parts.front()).toObject();
    setValueAt(child, parts.mid(1), value);
    root[parts.front()] = child;
}
} // namespace

ViewSelection validatedSelection(const SessionState& state, int sites, int heads, int segments, bool hasTerms,
                                 QStringList& problems)
{
    ViewSelection sel = state.selection;
    if (sel.site >= sites) {
        problems << QObject::tr("layer %1 does not exist (the model has %2)").arg(sel.site + 1).arg(sites);
        sel.site = 0;
        sel.siteAverage = false;
    }
    if (std::any_of(sel.heads.begin(), sel.heads.end(), [&](int h) { return h >= heads; })) {
        problems << QObject::tr("a head beyond %1 was selected").arg(heads);
        sel.heads = {0};
    }
    if (sel.segment >= segments) {
        problems << QObject::tr("segment %1 does not exist (the text has %2)").arg(sel.segment + 1).arg(segments);
        sel.segment = -1;
    }
    if ((!hasTerms && (!sel.terms.isFull() || sel.terms.raw)) || !sel.terms.any()) {
        problems << QObject::tr("its score terms do not apply; showing full attention");
        sel.terms = core::TermSelection{};
    }
    return sel;
}

QString sessionExtension()
{
    return QStringLiteral(".attnscope");
}

QString withSessionExtension(const QString& path)
{
    return QFileInfo(path).suffix().isEmpty() ? path + sessionExtension() : path;
}

QString writeSessionFile(const QString& path, const SessionState& state)
{
    QJsonObject o;
    o[QStringLiteral("format")] = QString::fromLatin1(kFormat);
    for (const auto& k : keys()) {
        const QJsonValue v = k.write(state);
        if (!v.isNull())
            setValueAt(o, QString::fromLatin1(k.path).split('.'), v);
    }
    return saveFileAtomically(path, QJsonDocument(o).toJson());
}

QString readSessionFile(const QString& path, SessionState& state)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return QObject::tr("%1: cannot read (%2)").arg(path, f.errorString());
    if (f.size() > 512 * 1024 * 1024)
        return QObject::tr("%1: too large for a session file").arg(path);
    QJsonParseError err{};
    const QJsonDocument doc = QJsonDocument::fromJson(f.readAll(), &err);
    if (doc.isNull() || !doc.isObject())
        return QObject::tr("%1: not a session file (%2)").arg(path, err.errorString());
    const QJsonObject o = doc.object();
    if (o.value(QStringLiteral("format")).toString() != QLatin1String(kFormat))
        return QObject::tr("%1: not an attnscope session (format is not %2)").arg(path, QString::fromLatin1(kFormat));
    SessionState s;
    for (const auto& k : keys()) {
        const QJsonValue v = valueAt(o, QString::fromLatin1(k.path));
        if (v.isUndefined() || v.isNull()) {
            if (k.required)
                return QObject::tr("%1: key \"%2\" is missing").arg(path, QString::fromLatin1(k.path));
            continue;
        }
        if (const QString e = k.read(s, v); !e.isEmpty())
            return QObject::tr("%1: key \"%2\" %3").arg(path, QString::fromLatin1(k.path), e);
    }
    state = s;
    return {};
}

} // namespace attnscope::app
