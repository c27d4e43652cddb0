// The .npy writer's output is read back by numpy itself (the format's reference reader).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

#include "core/npy.h"

TEST(Npy, NumpyReadsWhatWeWrite) {
  const auto dir = std::filesystem::temp_directory_path() / "ls_npy_test";
  std::filesystem::create_directories(dir);
  for (std::vector<std::int64_t> shape : {std::vector<std::int64_t>{5}, {2, 3}, {1, 7}}) {
    std::int64_t n = 1;
    for (auto d : shape) n *= d;
    std::vector<float> v(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) * 0.5f - 1.0f;
    const auto path = (dir / "a.npy").string();
    ls::write_npy_f32(path, v, shape);
    std::string expect_shape = "(";
    for (std::size_t i = 0; i < shape.size(); ++i) expect_shape += std::to_string(shape[i]) + ",";
    expect_shape += ")";
    const std::string cmd = "/usr/bin/python3 -c \"import numpy as np; a=np.load('" + path +
                            "'); assert a.dtype==np.float32 and a.shape==" + expect_shape +
                            ", a.shape; assert (a.ravel()==np.arange(a.size)*0.5-1).all()\"";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  EXPECT_THROW(ls::write_npy_f32((dir / "b.npy").string(), std::vector<float>(3), {2, 2}),
               std::exception);
}
