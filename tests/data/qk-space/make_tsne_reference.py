"""Reference numbers for attnscope's t-SNE: scikit-learn's exact and Barnes-Hut t-SNE (Debian python3-sklearn) on
fixed data."""
import json, sys, numpy as np, sklearn
from sklearn.manifold import TSNE, trustworthiness
rng = np.random.default_rng(11)
cases = []
for name, n_clusters, per, dim, perplexity, method in [("blobs3", 3, 60, 10, 30.0, "exact"),
                                                      ("blobs5", 5, 40, 16, 20.0, "exact"),
                                                      ("gauss", 1, 150, 8, 30.0, "exact"),
                                                      ("blobs6-bh", 6, 100, 16, 30.0, "barnes_hut")]:
    centres = rng.normal(0, 6, size=(n_clusters, dim))
    x = np.concatenate([c + rng.normal(0, 1, size=(per, dim)) for c in centres]).astype(np.float32)
    kls = []
    for seed in range(3):
        t = TSNE(n_components=2, perplexity=perplexity, method=method, angle=0.5, init="pca", learning_rate="auto",
                 random_state=seed, n_iter=1000)
        y = t.fit_transform(x.astype(np.float64))
        kls.append(float(t.kl_divergence_))
    cases.append({"name": name, "n": int(x.shape[0]), "dim": dim, "perplexity": perplexity, "method": method,
                  "data": [round(float(v), 6) for v in x.ravel()], "kl_divergence": kls,
                  "trustworthiness_k5": float(trustworthiness(x, y, n_neighbors=5))})
json.dump({"sklearn": sklearn.__version__, "cases": cases}, open(sys.argv[1], "w"))
print(sklearn.__version__, [(c["name"], c["kl_divergence"]) for c in cases])
