"""The simulator: the program lowered to the machine and run in time (simpy) and in value (numpy).

``plan`` lowers a program (components, durations, semaphores), ``engine`` runs it as one simpy
process per sequencer and per DMA queue, ``simulator`` executes the ops on a simulated memory
and compares interleavings with the sequential reference, ``trace`` is what a run emits (the
one tracing hook: the simulator knows nothing of races; ``verify`` consumes traces), and
``export`` writes Perfetto / Chrome traces and timeline pictures.
"""
