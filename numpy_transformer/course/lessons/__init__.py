"""The lessons around the notebooks: their website (site.py, site_assets.py), what a lesson
can run without (needs.py) and the lessons' key figures (figures.py)."""
