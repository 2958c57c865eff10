// Lets Catch print Qt values in failed assertions (QString, QStringList, QRect, QPoint, QSize).
#pragma once

#include <QPoint>
#include <QRect>
#include <QSize>
#include <QString>
#include <QStringList>
#include <catch2/catch.hpp>

namespace Catch {
template <> struct StringMaker<QString> {
    static std::string convert(const QString& s) { return '"' + s.toStdString() + '"'; }
};
template <> struct StringMaker<QStringList> {
    static std::string convert(const QStringList& l) { return "[" + l.join(QStringLiteral(", ")).toStdString() + "]"; }
};
template <> struct StringMaker<QRect> {
    static std::string convert(const QRect& r)
    {
        return QStringLiteral("%1x%2+%3+%4").arg(r.width()).arg(r.height()).arg(r.x()).arg(r.y()).toStdString();
    }
};
template <> struct StringMaker<QPoint> {
    static std::string convert(const QPoint& p) { return QStringLiteral("(%1, %2)").arg(p.x()).arg(p.y()).toStdString(); }
};
template <> struct StringMaker<QSize> {
    static std::string convert(const QSize& s) { return QStringLiteral("%1x%2").arg(s.width()).arg(s.height()).toStdString(); }
};
} // namespace Catch
