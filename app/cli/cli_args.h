// The command line's arguments as every attnscope-cli subcommand reads them: `command --key value ... --flag`.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace attnscope::cli {

struct Args {
    std::string command;
    std::map<std::string, std::string> options;
    bool has(const std::string& key) const { return options.count(key) != 0; }
};

// `known` options take a value; `flags` take none (they are stored as "1"). Error(BadInput) for anything else.
Args parseArgs(int argc, char** argv, const std::vector<std::string>& known, const std::vector<std::string>& flags = {});
// The option's value; Error(BadInput) "COMMAND needs --KEY" without it.
const std::string& require(const Args& a, const std::string& key);
// The option as an integer (all of it), `fallback` when absent.
int parseInt(const Args& a, const std::string& key, int fallback);
// The option as a finite number (a message naming the option and its text otherwise); `fallback` when absent.
double parseDouble(const Args& a, const std::string& key, double fallback);
// A number option that must be finite and >= 0.
double parseNonNegative(const Args& a, const std::string& key, double fallback);
// --shard I/N as (I, N); (1, 1) when absent. Error(BadInput) for anything but two numbers with a slash.
std::pair<int, int> parseShard(const Args& a);
// The text of --text or --text-file.
std::string textArgument(const Args& a);
// A text file's contents; Error(BadInput) naming the file when it is empty or only white space.
std::string nonEmptyTextFile(const std::string& path);

} // namespace attnscope::cli
