"""benchmarks/throughput.py's races, one module each: `fixed_shapes`
(train, inference), `input_pipeline`, `ablation`, `recipe_steps`,
`bf16_curve`, `accumulation_memory`; what they share in `shared`."""
