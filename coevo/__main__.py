from coevo.cli import app

app(prog_name="coevo")
