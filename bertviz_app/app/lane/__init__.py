"""The app's one training lane and what it runs, apart from the page: `training.py` (`TrainingLane`: one training at a
time, in a thread of its own; `Job`, a fine-tuning with its `FinetuneSettings`; whether the app may train and on
what) and `pretraining.py` (`PretrainJob`, a tiny BERT from scratch with its `PretrainSettings`: the texts, the model
sizes, the class's sentence). Nothing here imports the page or its tabs."""
