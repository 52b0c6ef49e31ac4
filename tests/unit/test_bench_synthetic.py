"""The scale benchmark's synthetic data: clustered vectors and texts, deterministic
(one small measurement on real SQLite and Chroma: tests/integration/test_bench_scale.py)."""

from __future__ import annotations

import numpy as np

from bench.scale import DIMENSIONS, Synthetic


def test_synthetic_vectors_cluster_and_texts_share_their_clusters_words() -> None:
    synthetic = Synthetic(1000)
    clusters = np.array([0, 0, 1])
    vectors = synthetic.vectors(clusters)
    assert vectors.shape == (3, DIMENSIONS)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    to_centroid = float(vectors[0] @ synthetic.centroids[0])
    assert 0.6 < to_centroid < 0.8
    assert float(vectors[0] @ vectors[1]) > float(vectors[0] @ vectors[2])
    text, query = synthetic.query(3)
    assert set(text.split()) <= set(synthetic.cluster_words[3])
    assert float(query @ synthetic.centroids[3]) > 0.6
    assert Synthetic(1000).cluster_words == synthetic.cluster_words  # deterministic
