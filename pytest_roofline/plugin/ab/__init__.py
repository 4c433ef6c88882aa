"""What only ``pytest-roofline ab``'s processes run: the script a side starts with (``child.py``), the modes it
installs through the plugin's ``pytest_roofline_mode`` hook (``side_modes.py``) and the request loop of a serving
process (``server.py``)."""
