// PCA through the eigenvectors of the covariance (dim x dim, small for attention heads).
#include "embed/pca.h"

#include "embed/point_data.h"

#include <Eigen/Dense>
#include <algorithm>

namespace attnscope::core {

std::vector<float> pca2(const std::vector<float>& data, int n, int dim)
{
    checkPointData(data, n, dim, "PCA");
    std::vector<float> out(static_cast<std::size_t>(n) * 2, 0.0f);
    if (n == 0 || dim == 0)
        return out;
    Eigen::MatrixXd x(n, dim);
    for (int i = 0; i < n; ++i)
        for (int c = 0; c < dim; ++c)
            x(i, c) = data[static_cast<std::size_t>(i) * dim + c];
    x.rowwise() -= x.colwise().mean();
    const Eigen::MatrixXd cov = x.transpose() * x / std::max(1, n - 1);
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(cov);
    const int axes = std::min(2, dim);
    for (int a = 0; a < axes; ++a) {
        Eigen::VectorXd axis = eig.eigenvectors().col(dim - 1 - a); // eigenvalues ascend
        Eigen::Index big = 0;
        axis.cwiseAbs().maxCoeff(&big);
        if (axis(big) < 0)
            axis = -axis;
        const Eigen::VectorXd coord = x * axis;
        for (int i = 0; i < n; ++i)
            out[static_cast<std::size_t>(i) * 2 + a] = static_cast<float>(coord(i));
    }
    return out;
}

} // namespace attnscope::core
