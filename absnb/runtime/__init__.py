"""Real execution: the Spark runtime (``spark``, the only module that imports pyspark, with
``daemon``, Spark's Python daemon preloading absnb), the framed TCP data plane
(``transport``), the control plane (``control``) and checkpoint storage (``storage``)."""
