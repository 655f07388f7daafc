"""TinyTPU: the ISA table, bundle format, assembler, golden model, co-simulation and the tinygrad
`TINYTPU` device. Importing the package imports nothing: tinytpu.layers lists its modules in layer
order. The tinygrad device needs no import either: the start-up hook tinytpu_device.pth
(startup/_tinytpu_autoload.py) registers it, lazily, when tinygrad first asks for it
(tinytpu.backend.device.register() does it by hand, e.g. with TINYTPU_AUTOLOAD=0)."""
