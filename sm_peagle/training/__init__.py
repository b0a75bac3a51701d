"""Training a P-EAGLE head as a SageMaker training job (`peagle drafter train`): the pure
parts. `spec` checks the arguments (`TrainSpec`), `checks` reads the target and the data
and judges them, `images` is the training image table, `request` builds the exact
CreateTrainingJob request, `report` reads what the job wrote. No AWS here: the calls are
`sm_peagle.lifecycle.training`, the SDK method `sm_peagle.ops.training`."""
