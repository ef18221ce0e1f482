"""components.formats.conllu"""
