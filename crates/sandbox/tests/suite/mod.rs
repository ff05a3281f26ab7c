mod confinement;
