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
    expected_datasets
from {{ source('warehouse', 'models') }}
