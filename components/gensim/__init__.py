"""gensim: word2vec vectors for casflow's models (optional extra ``vectors``)."""
