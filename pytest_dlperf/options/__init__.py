"""The plugin's command-line options: the core's options validated into ``RunOptions`` (``core``), the
option groups each feature adds its options through (``groups``), their value types (``argtypes``), the
rootdir guard (``rootdir``) and docs/options.md rendered from the registry (``doc``). Empty on purpose:
the plugin loads ``groups`` and ``rootdir`` in every pytest session, and they must not pull in the rest."""
