"""The pytest glue: the only folder that imports pytest (:mod:`.hooks`, the plugin's entry point, and
:mod:`.hookspecs`). The fixture's logic, the session, the marker and the settings here do not import it."""
