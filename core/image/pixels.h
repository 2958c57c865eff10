// An image as a vision transformer takes it: preprocessed pixel values, channels first ([3, height, width], RGB,
// float32), what Hugging Face's image processors hand the model as pixel_values (batch 1).
#pragma once

#include <vector>

namespace attnscope::core {

struct PixelValues {
    int height = 0, width = 0;
    std::vector<float> data; // [3, height, width]
    float at(int channel, int y, int x) const
    {
        return data[(static_cast<std::size_t>(channel) * height + y) * width + x];
    }
};

} // namespace attnscope::core
