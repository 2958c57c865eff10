// Argument parsing shared by the attnscope-cli subcommands (cli_args.h).
#include "cli_args.h"

#include <cmath>

#include "util/error.h"
#include "util/text_file.h"

#include <algorithm>
#include <exception>

namespace attnscope::cli {

using core::Error;
using core::ErrorCode;

Args parseArgs(int argc, char** argv, const std::vector<std::string>& known, const std::vector<std::string>& flags)
{
    Args a;
    if (argc < 2)
        throw Error(ErrorCode::BadInput, "no command given");
    a.command = argv[1];
    for (int i = 2; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg.rfind("--", 0) != 0)
            throw Error(ErrorCode::BadInput, "unexpected argument \"" + arg + "\"");
        const std::string key = arg.substr(2);
        if (std::find(flags.begin(), flags.end(), key) != flags.end()) {
            a.options[key] = "1";
            continue;
        }
        if (std::find(known.begin(), known.end(), key) == known.end())
            throw Error(ErrorCode::BadInput, "unknown option --" + key + " for " + a.command);
        if (i + 1 >= argc)
            throw Error(ErrorCode::BadInput, "option --" + key + " needs a value");
        a.options[key] = argv[++i];
    }
    return a;
}

const std::string& require(const Args& a, const std::string& key)
{
    const auto it = a.options.find(key);
    if (it == a.options.end())
        throw Error(ErrorCode::BadInput, a.command + " needs --" + key);
    return it->second;
}

int parseInt(const Args& a, const std::string& key, int fallback)
{
    const auto it = a.options.find(key);
    if (it == a.options.end())
        return fallback;
    try {
        std::size_t used = 0;
        const int v = std::stoi(it->second, &used);
        if (used == it->second.size())
            return v;
    } catch (const std::exception&) {
    }
    throw Error(ErrorCode::BadInput, "--" + key + " expects an integer, got \"" + it->second + "\"");
}

double parseNonNegative(const Args& a, const std::string& key, double fallback)
{
    const auto it = a.options.find(key);
    if (it == a.options.end())
        return fallback;
    try {
        std::size_t used = 0;
        const double v = std::stod(it->second, &used);
        if (used == it->second.size() && std::isfinite(v) && v >= 0)
            return v;
    } catch (const std::exception&) {
    }
    throw Error(ErrorCode::BadInput, "--" + key + " expects a number >= 0, got \"" + it->second + "\"");
}

std::string textArgument(const Args& a)
{
    if (a.options.count("text") && a.options.count("text-file"))
        throw Error(ErrorCode::BadInput, "give either --text or --text-file, not both");
    return a.options.count("text-file") ? nonEmptyTextFile(a.options.at("text-file")) : require(a, "text");
}

std::string nonEmptyTextFile(const std::string& path)
{
    std::string text = core::readTextFile(path);
    if (text.find_first_not_of(" \t\r\n") == std::string::npos)
        throw Error(ErrorCode::BadInput, text.empty() ? "the file is empty" : "the file holds only white space", path);
    return text;
}

} // namespace attnscope::cli
