select
    model,
    family,
    size,
    size_rank,
    recipe,
    recipe_sha256,
    recipe_conformant,
    recipe_nonconformities,
    suite,
    expected_datasets,
    coalesce(base_model, model) as base_model,
    coalesce(seed, 0) as seed,
    coalesce(base_model, model) <> model as is_replicate
from {{ source('warehouse', 'models') }}
