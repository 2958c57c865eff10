// Catch2 main for tests that need a QApplication: offscreen unless a display is set, quiet runtime dir.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <QApplication>
#include <QStandardPaths>
#include <cstdlib>
#include <filesystem>

int main(int argc, char** argv)
{
    // catch_discover_tests runs this binary at build time, usually without a display.
    if (!std::getenv("QT_QPA_PLATFORM") && !std::getenv("DISPLAY") && !std::getenv("WAYLAND_DISPLAY"))
        setenv("QT_QPA_PLATFORM", "offscreen", 1);
    if (!std::getenv("XDG_RUNTIME_DIR")) {
        const auto dir = std::filesystem::temp_directory_path() / "attnscope-test-runtime";
        std::filesystem::create_directories(dir);
        std::filesystem::permissions(dir, std::filesystem::perms::owner_all, std::filesystem::perm_options::replace);
        setenv("XDG_RUNTIME_DIR", dir.c_str(), 1);
    }
    QStandardPaths::setTestModeEnabled(true); // settings of tests never touch the user's
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("attnscope-tests"));
    return Catch::Session().run(argc, argv);
}
