from callscope.cli import app

app()
