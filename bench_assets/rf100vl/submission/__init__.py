"""Submission: the `va.submission.v1` leaderboard file of one model built from the artifacts, its JSON Schema and the
shape of the published entries, and publishing a campaign's artifacts to a Hugging Face repo with proof they
arrived. Builds on `scoring`, `training` and `datasets`."""
