// Architecture rules, checked on the sources: core/ has no Qt; widgets/ only draw (no model code); the compute side
// of the app (compute/, views/) never reaches up into the window (ui/), and the views never into the compute layer;
// a run of a model (core/run/) never needs an analysis (core/analysis/).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

namespace fs = std::filesystem;

namespace {
// Every line of every source file under `folder` that matches `forbidden`; returns the number of files seen.
int checkIncludes(const fs::path& folder, const std::regex& forbidden)
{
    REQUIRE(fs::is_directory(folder));
    int files = 0;
    for (const auto& e : fs::recursive_directory_iterator(folder)) {
        if (!e.is_regular_file())
            continue;
        const auto ext = e.path().extension().string();
        if (ext != ".h" && ext != ".cpp" && ext != ".inc")
            continue;
        ++files;
        std::ifstream in(e.path());
        std::string line;
        int lineNo = 0;
        while (std::getline(in, line)) {
            ++lineNo;
            INFO(e.path().string() << ":" << lineNo << ": " << line);
            CHECK_FALSE(std::regex_search(line, forbidden));
        }
    }
    return files;
}
const fs::path kSource = ATTNSCOPE_SOURCE_DIR;
} // namespace

TEST_CASE("core/ includes no Qt header", "[layering]")
{
    // <QString>, <QtCore/...>, "qobject.h", <qcustomplot.h> ...
    const std::regex qtInclude(R"(^\s*#\s*include\s*[<"](Q[A-Za-z]+|Qt[A-Za-z]*/[^>"]*|q[a-z_]+\.h)[>"])");
    CHECK(checkIncludes(kSource / "core", qtInclude) > 10);
}

TEST_CASE("widgets/ draw only: no model, tokenizer or run code", "[layering]")
{
    const std::regex coreInclude(R"(^\s*#\s*include\s*"(model|run|tokenize|io|analysis)/)");
    CHECK(checkIncludes(kSource / "widgets", coreInclude) > 5);
}

TEST_CASE("app/compute and app/views include nothing from app/ui", "[layering]")
{
    const std::regex uiInclude(R"(^\s*#\s*include\s*"ui/)");
    CHECK(checkIncludes(kSource / "app" / "compute", uiInclude) > 3);
    CHECK(checkIncludes(kSource / "app" / "views", uiInclude) > 3);
}

TEST_CASE("app/views include nothing from app/compute: what both share is plain data in app/data", "[layering]")
{
    const std::regex computeInclude(R"(^\s*#\s*include\s*"compute/)");
    CHECK(checkIncludes(kSource / "app" / "views", computeInclude) > 3);
}

TEST_CASE("core/run includes nothing from core/analysis", "[layering]")
{
    const std::regex analysisInclude(R"(^\s*#\s*include\s*"analysis/)");
    CHECK(checkIncludes(kSource / "core" / "run", analysisInclude) > 3);
}

namespace {
// Lines that are neither blank nor only a comment.
int linesOfCode(const fs::path& file)
{
    std::ifstream in(file);
    REQUIRE(in);
    const std::regex noCode(R"(^\s*(//.*)?$)");
    int n = 0;
    for (std::string line; std::getline(in, line);)
        n += std::regex_match(line, noCode) ? 0 : 1;
    return n;
}
} // namespace

TEST_CASE("the main window is a shell: its layout and menus in at most 450 lines of code", "[layering]")
{
    // The work goes to the controllers beside it (selection, streams, analyses, files, dock sizes).
    const fs::path ui = kSource / "app" / "ui";
    const int lines = linesOfCode(ui / "main_window.cpp") + linesOfCode(ui / "main_menus.cpp");
    INFO("main_window.cpp + main_menus.cpp: " << lines << " lines of code");
    CHECK(lines > 100);
    CHECK(lines <= 450);
}
