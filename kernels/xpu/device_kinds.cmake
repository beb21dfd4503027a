# OpenCL devices: xpu:N.
tessera_device_kinds(xpu)
