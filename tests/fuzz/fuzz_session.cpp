// Fuzz harness: a session file (.attnscope JSON) read and validated against a model's shape, as File > Open Session
// does before anything is applied.
#include "fuzz_support.h"
#include "ui/session.h"

#include <QString>
#include <QStringList>

using namespace attnscope;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const auto path = fuzz::writeInput(data, size, "session.attnscope");
    app::SessionState state;
    if (app::readSessionFile(QString::fromStdString(path), state).isEmpty()) {
        QStringList problems;
        (void)app::validatedSelection(state, 6, 8, 3, true, problems);
    }
    return 0;
}
