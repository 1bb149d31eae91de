"""The RF100-VL detection family: datasets, fine-tuning, predictions, COCO scores, submissions and their report
page. `definitions.py` holds what the code location loads (`defs`) and what the report receives (`contribution`)."""
