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

namespace {
// The option `key` read whole by `read` (std::stoi, std::stod) and accepted by `ok`; `fallback` when absent.
template <class T, class Read, class Ok>
T parseNumber(const Args& a, const std::string& key, T fallback, Read read, Ok ok, const char* expected)
{
    const auto it = a.options.find(key);
    if (it == a.options.end())
        return fallback;
    try {
        std::size_t used = 0;
        const T v = read(it->second, &used);
        if (used == it->second.size() && ok(v))
            return v;
    } catch (const std::exception&) {
    }
    throw Error(ErrorCode::BadInput, "--" + key + " expects " + expected + ", got \"" + it->second + "\"");
}
} // namespace

int parseInt(const Args& a, const std::string& key, int fallback)
{
    return parseNumber<int>(
        a, key, fallback, [](const std::string& s, std::size_t* used) { return std::stoi(s, used); }, [](int) { return true; },
        "an integer");
}

double parseDouble(const Args& a, const std::string& key, double fallback)
{
    return parseNumber<double>(
        a, key, fallback, [](const std::string& s, std::size_t* used) { return std::stod(s, used); },
        [](double v) { return std::isfinite(v); }, "a number");
}

double parseNonNegative(const Args& a, const std::string& key, double fallback)
{
    return parseNumber<double>(
        a, key, fallback, [](const std::string& s, std::size_t* used) { return std::stod(s, used); },
        [](double v) { return std::isfinite(v) && v >= 0; }, "a number >= 0");
}

std::pair<int, int> parseShard(const Args& a)
{
    if (!a.has("shard"))
        return {1, 1};
    const auto& s = a.options.at("shard");
    const auto slash = s.find('/');
    try {
        std::size_t used1 = 0, used2 = 0;
        if (slash != std::string::npos) {
            const int i = std::stoi(s.substr(0, slash), &used1), n = std::stoi(s.substr(slash + 1), &used2);
            if (used1 == slash && used2 == s.size() - slash - 1)
                return {i, n};
        }
    } catch (const std::exception&) {
    }
    throw Error(ErrorCode::BadInput, "--shard expects I/N, e.g. 2/8, got \"" + s + "\"");
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
