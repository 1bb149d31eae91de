"""Writes bench_assets/rf100vl/data/va_submission_v1.schema.json: the JSON Schema of `va.submission.v1` as the
published leaderboard files write it (the field list in docs/report.md, "The published shape"). Every listed key
is required with its JSON type; `float|null` keys may be null; extra keys are allowed (a producer's own facts go
under new keys). Run it after changing the shape: `.venv/bin/python scripts/make_submission_schema.py`."""

import json
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "bench_assets/rf100vl/data/va_submission_v1.schema.json"
S, INT, F, B = {"type": "string"}, {"type": "integer"}, {"type": "number"}, {"type": "boolean"}
FN, BN = {"type": ["number", "null"]}, {"type": ["boolean", "null"]}
UNIT = {"type": "number", "minimum": 0, "maximum": 1}


def obj(**props: dict) -> dict:
    return {"type": "object", "required": sorted(props), "properties": props}


def const(v: object) -> dict:
    return {"const": v}


def arr(items: dict, **kw: object) -> dict:
    return {"type": "array", "items": items, **kw}


ACCURACY = obj(**{k: UNIT for k in ("mAP_50_95", "mAP_50", "mAP_75", "mAP_small", "mAP_medium", "mAP_large", "AR1",
                                    "AR10", "AR100", "AR_small", "AR_medium", "AR_large", "AR_max_det")})
DATASET_ENTRY = obj(dataset=S, num_images=INT, num_classes=INT, dataset_version=INT, weights=S, weights_sha256=S,
                    result_file=S, predictions_file=S, resumed_from_cache=B, wall_seconds=F,
                    mAP_50=UNIT, mAP_50_95=UNIT, mAP_75=UNIT, AR100=UNIT, AR_max_det=UNIT)
SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "va.submission.v1",
    "title": "va.submission.v1 as the published RF100-VL leaderboard files write it",
    **obj(
        schema_version=const("va.submission.v1"), submission_id=S,
        created_at={"type": "string", "pattern": r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$"},
        benchmark=obj(harness=S, harness_version=S, libreyolo_version=S, libreyolo_commit=S, libreyolo_dirty=BN),
        model=obj(id=S, name=S, family=S, variant=S, source=S, weights=S, input_size=INT),
        dataset=obj(id=const("rf100_vl"), split=S, num_images=INT, num_datasets=INT, num_datasets_discovered=INT,
                    num_datasets_selected=INT),
        config=obj(batch_size=INT, input_size=INT, conf=F, iou=F, max_det=INT),
        hardware=obj(gpu=S, gpu_memory_gb={"type": ["number", "null"]}, driver_version=S, cuda_version=S, cpu=S,
                     cpu_cores=INT, ram_gb=INT, id=S),
        software=obj(python=S, torch=S, libreyolo=S, libreyolo_commit=S, libreyolo_dirty=BN, onnxruntime=S,
                     onnx=S, tensorrt=S),
        accuracy=ACCURACY,
        timing=obj(batch_size=INT, num_images=INT,
                   total_ms=obj(mean=F, std=F, p50=F, p95=F, p99=F, preprocess_ms=FN, inference_ms=FN,
                                postprocess_ms=FN)),
        throughput=obj(fps_mean=F, fps_p50=F),
        model_stats=obj(params_millions=F, gflops=F),
        memory=obj(peak_vram_mb=FN, peak_ram_mb=F),
        metadata=obj(benchmark_date=S, benchmark_version=S),
        eval=obj(dataset=const("rf100_vl"), split=S, numImages=INT, maxDets=arr(INT)),
        implementation=obj(provider=S, version=S),
        runtime=obj(format=S, precision={"enum": ["fp32", "fp16", "bf16"]}, provider={"enum": ["cuda", "cpu"]},
                    device={"enum": ["gpu", "cpu"]}),
        repro=obj(
            harness_version=S, harness_commit=S, harness_dirty=BN, protocol_version=S, argv=arr(S), command=S,
            dataset=obj(
                id=const("rf100_vl"), split=S, image_id_sha256=S,
                identity_scheme=const("sha256(canonical JSON of dataset name, image count, per-dataset image-id "
                                      "SHA-256, and locked version id)"),
                datasets=arr(obj(dataset=S, num_images=INT, image_id_sha256=S, version_id=INT)),
                versions=obj(file=S, sha256=S, schema_version=const("rf100vl.versions.v1"), subset=S,
                             datasets={"type": "object",
                                       "additionalProperties": obj(project_name=S, version_id=INT)}),
                domain_manifest=obj(file=S, sha256=S, source=obj(repository=S, commit=S, path=S, license=S,
                                                                 canonicalization={"type": "object"}))),
            weights=obj(file=S, sha256=S, source=S,
                        identity_scheme=const("sha256(canonical JSON of dataset name and checkpoint file SHA-256)"),
                        datasets=arr(obj(dataset=S, file=S, sha256=S, source=S))),
            recipe=obj(file=S, sha256=S, source=S, dataset_count=INT)),
        rf100vl=obj(
            regime=S, aggregation=S,
            protocol=obj(version=S, nms_iou=F, max_det=INT, expected_datasets=INT),
            dataset_versions_sha256=S, recipe_sha256=S, per_dataset_results_dir=S, valid_submission=B,
            invalid_reasons=arr(S), datasets=arr(DATASET_ENTRY), skipped_datasets=arr(S)),
    ),
}

if __name__ == "__main__":
    OUT.write_text(json.dumps(SCHEMA, indent=1) + "\n")
    print(f"wrote {OUT}")
