"""The result of one measurement (:class:`.result.Result`) and its paragraph in words."""
