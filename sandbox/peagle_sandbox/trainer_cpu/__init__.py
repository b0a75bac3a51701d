"""The sandbox's CPU trainer environment: a `peagle_train.backends` backend (`backend`) and its
installer (`install`, `peagle sandbox install-trainer`).

The product's training entrypoint (`sm_peagle/training/source/peagle_train.py`) holds no CPU
code: everything speculators 0.9.0 needs to train on a CPU lives here, and is registered only
in the trainer's own virtualenv (see `install`)."""
