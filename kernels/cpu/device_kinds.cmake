# The host CPU: devices cpu (cpu:0).
tessera_device_kinds(cpu)
