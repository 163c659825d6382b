"""Benchmarks of the project's own speed, run from a source checkout as ``python -m benchmarks.NAME``.

They live beside the package, not in it: the wheel ships ``sb3_dirpg`` only. They may import ``sb3_dirpg``; the
package never imports them. Their committed results are in ``docs/results/``.
"""
