"""The contestants the races share: keras-bert's recipes (`recipe`), the
one PyTorch loop (`torch_loop`), the speed races' model (`synthetic`) and
the serving tools (`serving`; their loaders: `serving_loaders`)."""
