// Architecture rule: nothing under core/ includes a Qt header (core must build and run without Qt).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

namespace fs = std::filesystem;

TEST_CASE("core/ includes no Qt header", "[layering]")
{
    const fs::path core = fs::path(ATTNSCOPE_SOURCE_DIR) / "core";
    REQUIRE(fs::is_directory(core));
    // <QString>, <QtCore/...>, "qobject.h", <qcustomplot.h> ...
    const std::regex qtInclude(R"(^\s*#\s*include\s*[<"](Q[A-Za-z]+|Qt[A-Za-z]*/[^>"]*|q[a-z_]+\.h)[>"])");
    int files = 0;
    for (const auto& e : fs::recursive_directory_iterator(core)) {
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
            CHECK_FALSE(std::regex_search(line, qtInclude));
        }
    }
    CHECK(files > 10);
}
