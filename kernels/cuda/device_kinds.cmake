# One source tree, two kinds: cuda:N through nvcc, hip:N through hipcc.
tessera_device_kinds(cuda hip)
