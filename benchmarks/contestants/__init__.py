"""The contestants every race shares: keras-bert's recipes (`recipe`) and
training loop (`keras_loop`), the one PyTorch loop (`torch_loop`), the
speed races' model (`synthetic`) and the serving tools (`serving`)."""
