"""The time-budget standard's corpus: cases cut from real Laravel and Python projects and two
small whole applications, each violation and right shape annotated by hand;
`python -m bench doctor-standard` scores the doctor's rules of that standard against it."""
