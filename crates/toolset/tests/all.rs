mod suite;
