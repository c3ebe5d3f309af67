if (x) {
	    call(a,b);  
}
