"""Files the device reads (checked and bounded before a byte is read: ``input_file.py``) and
writes (whole, by one writer, never through a link: ``whole_file.py``)."""
