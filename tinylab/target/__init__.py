"""What kernels are planned and launched for, as data both the renderers and the runtimes read
(a layer below codegen; it imports only config and errors): cpu_target.py holds the CPU (`CPUTarget`,
its presets and detection, the C compiler's path), launch.py the GPU launch dimensions a renderer
computes once and a runtime launches.
"""
