"""Data sets used by the experiments: registry, cache-backed loaders, standardisation."""
from ._cache import ENV_DIR, ENV_OFFLINE, DatasetError, cache_dir, default_cache_dir
from .datasets import (DATASETS, Dataset, DatasetSpec, available, content_checksum, load_dataset,
                       packaged_file, standardize_predictors, to_pm1)

__all__ = [
    "DATASETS", "Dataset", "DatasetError", "DatasetSpec", "ENV_DIR", "ENV_OFFLINE", "available",
    "cache_dir", "content_checksum", "default_cache_dir", "load_dataset", "packaged_file",
    "standardize_predictors", "to_pm1",
]
