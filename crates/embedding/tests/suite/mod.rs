mod model;
